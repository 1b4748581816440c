"""Configuration: the broker's options (Kafka's names), topic configs, dynamic broker configs, and the
Kafka version profiles (--kafka-version)."""
