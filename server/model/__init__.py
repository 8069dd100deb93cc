"""The model endpoint: its configuration and client, one request with its retries, streaming,
the models it serves, the connection check, context windows, the SDK warm-up. No tools, no LSP."""
