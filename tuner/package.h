/*
 * package.h — pythonModule with packageUris, run as AI Platform runs it: the packages
 * (each a folder with setup.py or pyproject.toml, an sdist or a wheel, on this
 * machine) are installed with pip before the study's trials run, and every replica
 * runs `python3 -m MODULE` with them.
 *
 * They go into a Python virtual environment of the study's own, JOB_DIR/venv, made
 * with `python3 -m venv --system-site-packages`: what this machine has installed
 * (TensorFlow, PyTorch, cloudml-hypertune) counts and is not fetched again, and pip
 * builds the packages with the machine's setuptools and wheel (--no-build-isolation),
 * fetching from its index only what they require that the machine lacks; a package
 * folder is built into a wheel outside it, so that it is only read. `tuner run`
 * and `tuner resume` install them each time, so a changed package is picked up; pip's
 * output is in JOB_DIR/venv/install.log. AI Platform's gs:// URIs cannot be reached
 * from here: they are refused with a hint. docs/spec.md, "pythonModule and packageUris".
 */
#ifndef TN_TUNER_PACKAGE_H
#define TN_TUNER_PACKAGE_H

#include <stddef.h>
#include <stdio.h>

#include "tuner/spec.h"

/* Whether uri can name a package to install here: a local path, not a URL (gs://,
 * https://, ...); with check_files, also one that is there: a folder with setup.py or
 * pyproject.toml, or a file named .tar.gz, .tgz, .tar.bz2, .zip or .whl (relative
 * paths from the current folder). Returns 0, or TN_EINVAL with a message that quotes
 * uri and says what to give instead. */
int pkg_check_uri(const char *uri, int check_files, char *err, size_t errlen);

/* pkg_prepare's code when SIGINT, SIGTERM or SIGHUP stopped the install. */
#define PKG_STOPPED (-200)

/* Readies a spec with pythonModule and a non-empty packageUris to run: installs the
 * packages (paths relative to the current folder) into JOB_DIR/venv and sets
 * spec->command to that environment's python3, "-m", the module (spec->python_module
 * is then NULL), so that every replica runs it. Any other spec is left as it is.
 * Says what it does on log (NULL: quiet). Returns 0, or TN_EIO (TN_EINVAL when a
 * package is no longer there) with a message that names the log, ends with the last
 * lines pip wrote and a hint, or PKG_STOPPED when a stop signal came meanwhile (pip
 * and its build are stopped, their whole process group; pkg_stop_signal() says
 * which). */
int pkg_prepare(tn_spec *spec, FILE *log, char *err, size_t errlen);

/* The signal that stopped the last install (PKG_STOPPED), or 0. */
int pkg_stop_signal(void);

#endif
