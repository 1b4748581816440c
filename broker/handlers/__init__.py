"""One module per Kafka API: `handle(ctx, request)` returns the response (context.py: what a handler gets)."""
