"""turnstate_app: pauses of AI agent runs that any process can resume, from the database alone."""

__version__ = "0.1.0"
