# minibroker images. `docker build .` gives the broker (the last stage); `--target pipeline` the Spark jobs.
FROM python:3.11-slim AS base
WORKDIR /app
COPY pyproject.toml README.md ./
COPY broker broker
COPY protocol protocol
COPY coordinator coordinator
COPY zk zk
COPY jobs jobs
RUN pip install --no-cache-dir '.[registry,console]'

# The Spark jobs (docker-compose's `pipeline` service): Java (17+, as Spark 4 needs), pyspark; `ps` for Spark's scripts.
FROM base AS pipeline
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends default-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir '.[pipeline]'
ENTRYPOINT ["python", "-m", "jobs.spark_to_kafka"]

# The broker: `docker run -p 9092:9092 minibroker` serves clients on the host at localhost:9092. What Metadata
# tells clients to connect to is MINIBROKER_ADVERTISED (comma-separated [NAME://]HOST:PORT, for the listeners in
# order), unless the command gives --advertised: another published port or host needs
# `-e MINIBROKER_ADVERTISED=HOST:PORT`. Health: `python -m broker.healthcheck 127.0.0.1:9092` (ApiVersions).
FROM base AS broker
VOLUME /var/lib/minibroker
EXPOSE 9092 8081 8080
ENV MINIBROKER_ADVERTISED=localhost:9092
ENTRYPOINT ["python", "-m", "broker"]
CMD ["--listen", "0.0.0.0:9092", "--data-dir", "/var/lib/minibroker"]
