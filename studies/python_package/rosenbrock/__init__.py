"""An example trial package: rosenbrock.task tunes gradient descent on Rosenbrock's
function (see task.py)."""
