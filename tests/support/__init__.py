"""What the tests share and are not tests: fake servers (fakeapi, wire_server, replay_server,
notices), the small simulator fleet and its clock (simfleet), the fake key pair and client
(client), hypothesis strategies and example counts, and readers of run folders."""
