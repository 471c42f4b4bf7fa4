package cmd

import "testing"

func TestGoldenRunErrors(t *testing.T) {
	cases := map[string][]string{
		"run-unknown-job":     {"run", "pagerank"},
		"run-bad-backend":     {"run", "wordcount", "--backend", "cassandra"},
		"run-p-above-maxp":    {"run", "wordcount", "--parallelism", "5", "--max-parallelism", "4"},
		"run-restore-missing": {"run", "wordcount", "--restore", "../testdata/memory/missing.dump"},
		"run-restore-corrupt": {"run", "wordcount", "--restore", "../testdata/memory/bad-checksum.dump"},
		"run-no-job":          {"run"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}
