"""Rendering only: results in, text out."""
