"""k0maru retriever: BM25 (tantivy), vectors (Qdrant), the link graph, and hybrid search."""
