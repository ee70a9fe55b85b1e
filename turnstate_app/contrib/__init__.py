"""Optional integrations with agent frameworks, one subpackage each, each behind its own extra.

Nothing outside this package imports it, so the app never imports a framework you do not use.
"""
