"""In-loop reflection: the cadence checkpoint and where its cadence comes from.
Nothing is imported here: the cadence hook imports ``cadence`` on every tool call."""
