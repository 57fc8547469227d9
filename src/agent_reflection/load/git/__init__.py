"""Git histories: ``history`` loads commits (one streamed ``git log``, :mod:`.walk`, :mod:`.log`),
``repo`` finds the repository, ``signals`` reads commit messages, ``szz`` and ``szz_lines``
attribute fixes to the commits that introduced what they change. Nothing is imported here."""
