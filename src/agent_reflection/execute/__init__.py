"""Running notebooks: papermill's ``execute_notebook`` with a kernel for this interpreter.

In papermill's ``cli.py -> execute.py`` shape, the command (``reflect run``) and the
experiments' runner call :func:`~.execute.execute_notebook`:

- :mod:`.kernel`: the kernel spec that runs this interpreter (:func:`~.kernel.ensure_kernel`,
  registered when missing), the kernels' IPC sockets and their removal on SIGTERM;
- :mod:`.pool`: a run's kernels (:class:`~.pool.KernelPool`), each launched ahead of its
  notebook with that notebook's imports preloaded, each running one notebook and killed;
  :mod:`.client`: the kernel client they hand out, ready as soon as the kernel is;
- :mod:`.execute`: one jupytext notebook executed by papermill in such a kernel, and its HTML.
"""
