"""The model of llama-server streams: their features, and a seeded generator that builds them."""
