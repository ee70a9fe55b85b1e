"""The HTTP face of the app: DRF views over the lifecycle and the ledger, with their own error mapping.

Thin by design: who may see what comes from ``PauseQuerySet.for_user``, who may answer and
what a resume does come from :func:`turnstate_app.pauses.resume_pause`; nothing is decided
twice.
"""
