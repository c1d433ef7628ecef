"""The one compiled part of rmkit (everything else is configured in pyproject.toml).

``rmkit._linescan`` is optional: where no C compiler is found the build goes on without it and
the ``--jobs`` readers deal their chunks in Python (:mod:`rmkit.linescan`), with the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("rmkit._linescan", ["rmkit/_linescan.pyx"], optional=True)])
