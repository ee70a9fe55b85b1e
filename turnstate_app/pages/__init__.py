"""The person's side: an inbox of pending pauses and an answer page built from each pause's
``answer_schema``, mounted with ``path("answers/", include("turnstate_app.pages.urls"))``.

Every answer goes through :func:`~turnstate_app.pauses.resume_pause`, as the REST API's does;
the pages only turn forms into answers and outcomes into words.
"""
