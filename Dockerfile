# The retention batch job as a container image: `docker build -t retention:0.1.0 .`
# No `# syntax=` line: BuildKit would fetch that frontend from Docker Hub, which a host that
# reaches only a registry mirror (or nothing) cannot; the classic syntax builds everywhere.
# The base image is an argument, for a mirror or a digest:
#   docker build --build-arg PYTHON_IMAGE=mirror.example.com/python:3.11-slim@sha256:... .
#
#   mkdir -p reports
#   docker run --rm --read-only --tmpfs /tmp \
#     -v "$PWD/retention.yaml:/etc/retention/retention.yaml:ro" \
#     -v "$PWD/policies:/etc/retention/policies:ro" \
#     -v "$PWD/reports:/etc/retention/reports" \
#     -v "$PWD/private-key:/run/secrets/retention/private-key:ro" \
#     -e RETENTION_PUBLIC_KEY -e RETENTION_PRIVATE_KEY_FILE=/run/secrets/retention/private-key \
#     retention:0.1.0 run --dry-run
#
# The reports volume: retention.example.yaml's `reports.dir: reports/` is relative, so it
# resolves beside the mounted retention.yaml, and under --read-only only a volume there can
# be written (without it the run exits 2, naming reports.dir). The folder must be writable
# by uid 10001 (`chown 10001 reports`, or a reports.dir of /var/lib/retention/reports, the
# image's own volume, as the Kubernetes manifests set).
#
# No secret is baked in: the key pair comes from the environment and a mounted file (readable
# by uid 10001) at run time. Kubernetes manifests: deploy/kubernetes/. No HEALTHCHECK: a batch job has no health
# to probe; it ends, and its exit code is the answer (README "Running on a schedule").
# Pin the base by digest (python:3.11-slim@sha256:...) in your registry for repeatable builds.
ARG PYTHON_IMAGE=python:3.11-slim

# --- build: install the package and its dependencies into a virtualenv ---------------------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

RUN python -m venv /opt/retention

# gcc and the C library's headers: the wheel's build hook compiles the decision core with
# mypyc (tools/compiled.py), and RETENTION_COMPILE=yes fails the build rather than ship the
# plain Python form. They stay in this stage: the image below has no compiler.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Only what the wheel needs (the version is read from retention/__init__.py, the long
# description from README.md, the example policies and configuration ship in the wheel, the
# build hook compiles the core); .dockerignore keeps everything else out of the context.
COPY pyproject.toml README.md retention.example.yaml ./
COPY retention/ ./retention/
COPY policies/ ./policies/
COPY tools/compiled.py tools/hatch_compile.py ./tools/
RUN RETENTION_COMPILE=yes /opt/retention/bin/pip install --no-cache-dir .
# pip and setuptools install, they do not run: the image below never installs anything, and
# without them the virtualenv is about 25 MB smaller (and has two packages fewer to patch).
# Then the shipped policies are validated with what is left, so a dependency that needed
# either fails the build, not the first run.
RUN /opt/retention/bin/python -m pip uninstall --yes pip setuptools \
    && /opt/retention/bin/retention validate --policies policies > /dev/null

# --- run: the virtualenv on a clean slim image, no build tools, no sources -----------------
FROM ${PYTHON_IMAGE}

# A fixed, numeric, non-root user: Kubernetes can check runAsNonRoot against it, and the
# manifests use the same ids (runAsUser / runAsGroup / fsGroup 10001).
RUN groupadd --system --gid 10001 retention \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin retention \
    && mkdir -p /work /etc/retention/reports /var/lib/retention/reports \
    && chown 10001:10001 /work /var/lib/retention /var/lib/retention/reports

COPY --from=build /opt/retention /opt/retention

# MALLOC_ARENA_MAX=2: glibc gives each of the 8 walk threads a malloc arena of its own and
# never returns fragmented ones, so a large plan's RSS grows several-fold over its live data;
# two arenas keep it flat (about 60 MiB for 2,000 clusters). The CLI would otherwise re-exec
# itself once to set this; set here, it starts right away.
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only in Kubernetes; nothing to write.
# PYTHONUNBUFFERED: log lines reach `kubectl logs` / journald as they happen.
# RETENTION_CONFIG: where the manifests mount retention.yaml (policies/ beside it).
ENV PATH=/opt/retention/bin:$PATH \
    MALLOC_ARENA_MAX=2 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    RETENTION_CONFIG=/etc/retention/retention.yaml

# The working directory is writable by the job's user; run reports go to reports.dir of
# retention.yaml, /var/lib/retention/reports in the manifests' configuration: a volume, so it
# stays writable under --read-only (Kubernetes: an emptyDir or a PersistentVolumeClaim).
WORKDIR /work
VOLUME ["/var/lib/retention/reports"]

USER 10001:10001

ENTRYPOINT ["retention"]
CMD ["run"]
