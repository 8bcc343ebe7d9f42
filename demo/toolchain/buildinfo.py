"""Read the module build info that the Go linker embeds in every binary (what `go version -m` prints).

It lets `tau-demo toolchain versions` check binaries without a version flag (kueue,
kwok) and without Go installed.  Format (Go >= 1.18): the 16-byte header
"\\xff Go buildinf:" + ptrsize + flags; with flag bit 2 set, two varint-length-prefixed
strings follow at offset 32: the Go version and the module info.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"\xff Go buildinf:"


@dataclass(frozen=True)
class BuildInfo:
    go_version: str
    path: str                      # main package path
    main_module: str
    main_version: str
    deps: dict[str, str]           # module -> version (after replacement)
    settings: dict[str, str] = field(default_factory=dict)   # build settings: -tags, -ldflags, GOOS, ...


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def parse_modinfo(go_version: str, mod: str) -> BuildInfo:
    path = main_module = main_version = ""
    deps: dict[str, str] = {}
    settings: dict[str, str] = {}
    last = None
    for line in mod.splitlines():
        parts = line.split("\t")
        if parts[0] == "path" and len(parts) > 1:
            path = parts[1]
        elif parts[0] == "mod" and len(parts) > 2:
            main_module, main_version = parts[1], parts[2]
        elif parts[0] == "dep" and len(parts) > 2:
            deps[parts[1]] = parts[2]
            last = parts[1]
        elif parts[0] == "=>" and last and len(parts) > 2:
            deps[last] = parts[2]
        elif parts[0] == "build" and len(parts) > 1 and "=" in parts[1]:
            key, _, value = parts[1].partition("=")
            settings[key] = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
    return BuildInfo(go_version, path, main_module, main_version, deps, settings)


def read_build_info(binary: Path) -> BuildInfo | None:
    """Return the build info of a Go binary, or None if there is none."""
    try:
        data = binary.read_bytes()
    except OSError:
        return None
    at = data.find(MAGIC)
    if at < 0:
        return None
    try:                         # a file that ends inside the header or a length is cut short: none
        if not data[at + 15] & 0x2:      # flags; pre-1.18 pointer format: not produced by our Go 1.26 builds
            return None
        n, pos = _uvarint(data, at + 32)
        go_version = data[pos:pos + n].decode(errors="replace")
        pos += n
        n, pos = _uvarint(data, pos)
    except IndexError:
        return None
    mod = data[pos:pos + n]
    # modinfo is framed by 16-byte sentinels
    if len(mod) >= 33:
        mod = mod[16:-16]
    return parse_modinfo(go_version, mod.decode(errors="replace"))
