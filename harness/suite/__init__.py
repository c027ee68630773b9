"""Suite files: the recordings (and their SSE reader), the cases, and the golden files."""
