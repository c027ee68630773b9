"""Reports: result records turned into text, JSON, JUnit XML, GitHub output and progress."""
