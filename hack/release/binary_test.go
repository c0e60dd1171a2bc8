package main

import "testing"

func TestCheckBinary(t *testing.T) {
	for _, tc := range []struct {
		binary   []byte
		platform string
		ok       bool
	}{
		{fakeBinary("linux/amd64", "x"), "linux/amd64", true},
		{fakeBinary("linux/arm64", "x"), "linux/arm64", true},
		{fakeBinary("darwin/amd64", "x"), "darwin/amd64", true},
		{fakeBinary("darwin/arm64", "x"), "darwin/arm64", true},
		{fakeBinary("linux/amd64", "x"), "linux/arm64", false},
		{fakeBinary("darwin/arm64", "x"), "darwin/amd64", false},
		{fakeBinary("linux/arm64", "x"), "darwin/arm64", false},
		{fakeBinary("darwin/amd64", "x"), "linux/amd64", false},
		{[]byte("#!/bin/sh\n"), "linux/amd64", false},
		{fakeBinary("linux/amd64", "x"), "windows/amd64", false},
	} {
		if err := checkBinary(tc.binary, tc.platform); (err == nil) != tc.ok {
			t.Errorf("%q as %s: error %v, want ok %v", tc.binary[:4], tc.platform, err, tc.ok)
		}
	}
}
