"""The replication harness: everything that turns the method (the core of :mod:`hnclip_core`) into the paper's
experiments and the chapters' lessons, on the embedded default (:mod:`hnclip_core.toy`) or on real files.

* :mod:`.experiment` — a chapter's parameters as one validated object; training runs cached by configuration;
* :mod:`.ablations`, :mod:`.batch` — the studies of §3.4 as papermill grids over ``notebooks/ablation_run``;
* :mod:`.tidy`, :mod:`.scorecard`, :mod:`.paper`, :mod:`.calibration` — every result as one tidy table, judged
  claim by claim against the paper's numbers (shipped as JSON), and the runs behind the toy's design targets;
* :mod:`.geometry`, :mod:`.report`, :mod:`.plots` — measurements, tables and figures the
  chapters show;
* :mod:`.tutorial`, :mod:`.cli` — the chapters run headless, and the command line.
"""
