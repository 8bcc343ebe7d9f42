"""The stories reviewers run: success, timeout and race paths on the real cluster."""
