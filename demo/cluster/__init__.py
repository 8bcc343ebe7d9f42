"""The demo cluster: one backend interface (kwok: kwokctl binary runtime; kind: Docker) behind
`up/down/status`, its state on disk, host processes, and the install steps both backends share."""
