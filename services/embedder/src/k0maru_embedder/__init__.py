"""k0maru embedder: ONNX sentence embeddings for queries (gRPC) and chunks (Redis stream jobs)."""
