"""Git histories: ``loader.load_repo`` loads everything ``reflect load git`` loads; ``history``
loads commits (one streamed ``git log``, :mod:`.walk`, :mod:`.log`), ``repo`` finds the
repository, ``signals`` reads commit messages, ``szz`` and ``szz_lines`` attribute fixes to the
commits that introduced what they change, ``notes`` and ``ai_notes`` read git notes. Nothing is
imported here."""
