"""The results store: the schema, its SQLite and PostgreSQL dialects, views, merge."""
