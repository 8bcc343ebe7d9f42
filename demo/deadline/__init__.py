"""The admission deadline (layer 3): the protocol as pure decisions (protocol), and its controller loop."""
