"""The trial program of studies/python_package.yaml, packaged as AI Platform wants it:
this folder is the package (`pip install studies/python_package` installs it) and its
module rosenbrock.task is what runs, as `python3 -m rosenbrock.task --NAME=VALUE ...`.
The tuner installs it from trainingInput.packageUris before the trials run
(docs/spec.md, "pythonModule and packageUris")."""
from setuptools import find_packages, setup

setup(
    name="rosenbrock-trainer",
    version="0.1",
    packages=find_packages(),
    description="A hyperparameter-tuning example: gradient descent on Rosenbrock's function",
)
