"""hnclip_core — the tested logic behind the hnclip notebooks.

An educational replication of *Which Negatives Matter? Ask Your Text Encoder: Adaptive Similarity
Margins for Dense-Caption Retrieval* (HN-CLIP, arXiv 2608.18521). One module per concept:

* :mod:`hnclip_core.losses` — InfoNCE (Eq. 1), the boosted L_HN (Eq. 2), the FILIP token term (Eq. 3);
* :mod:`hnclip_core.longclip` — exact Long-CLIP checkpoint loading into open_clip, and saving;
* :mod:`hnclip_core.evaluate` — Recall@K retrieval evaluation (App. D.3);
* :mod:`hnclip_core.data` — the real benchmarks' loaders (the embedded synthetic benchmark is the harness's,
  :mod:`hnclip_core.toy`, whose ``register_datasets`` adds it to :func:`~hnclip_core.data.load_pairs`);
* :mod:`hnclip_core.train` — the one fine-tuning loop; :mod:`hnclip_core.open_clip_train` — L_HN inside open_clip's
  own trainer.

``pip install hnclip-core`` brings what the core needs, and the toy and ``python -m hnclip_core train`` need no more;
the notebooks' harness (the chapters, ablation grids, scorecard, plots and LoRA adapters of :mod:`.replication` and
:mod:`.frameworks`) needs the ``[lab]`` extra: ``pip install 'hnclip-core[lab]'`` (docs/package.md).
"""

__version__ = "0.1.0"
