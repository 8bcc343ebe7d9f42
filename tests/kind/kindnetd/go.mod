module example.invalid/tau-kindnetd

go 1.22
