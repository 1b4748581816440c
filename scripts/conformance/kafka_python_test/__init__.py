"""Copied into kafka-python's test/ (its sdist leaves this file out): makes `test` this folder's package, not
the standard library's regression tests, so `from test.testutil import ...` finds kafka-python's helpers."""

from kafka.future import Future

# An exception raised inside a future's callback fails the test instead of being logged and dropped.
Future.error_on_callbacks = True
