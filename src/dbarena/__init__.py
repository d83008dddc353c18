"""dbarena: benchmark database servers across machines and settings, honestly."""

__version__ = "0.1.0"
