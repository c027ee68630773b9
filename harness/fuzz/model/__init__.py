"""The model of llama-server streams: their features, and hypothesis strategies that build them."""
