package main

//go:generate go tool bpf2go -tags linux -target amd64,arm64 empty empty.bpf.c -- -I../collector/include -Wall -Werror -O2 -g
