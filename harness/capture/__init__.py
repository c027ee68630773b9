"""Capturing a live llama-server stream as a recording (`conform record`)."""
