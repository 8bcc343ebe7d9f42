"""The pinned toolchain: every version in one place (versions), each component with its version probe
and its builder (components), built from the Go module proxy into a version-keyed cache (gobuild)."""
