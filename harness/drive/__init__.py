"""Driving a target: loading it in-process, or as a program over the line protocol; normalizing."""
