package keygroup

import "testing"

// The ids Flink 2.3.0 wrote into the checked-in savepoints
// (testdata/flink/2.3.0/basic-*) next to each operator's uid.
func TestOperatorIDOfUIDMatchesFlink(t *testing.T) {
	for uid, want := range map[string]string{
		"keyed":        "e7beec23fd9f6ed5e1b8395129d43728",
		"source":       "e5a72f353fc1e6bbf3bd96a41384998c",
		"rules-source": "5182b45b6472b1a8299f474baebf57c3",
		"broadcast":    "cd609d6d6e317ffa5c3a045fcad5ecc9",
		"offsets":      "564c111b03a975956bbab38f0d34c8f5",
		// Uids of 16 bytes and more (a full murmur block) from the Table
		// API job of the harness, as Flink 2.3.0 recorded them.
		"4_constraint-validator": "43e0185bbd3d7d147a70e736c9f134c3",
		"1_external-datastream":  "8fb400e7c22828e1cc5e8db98556ca06",
		"3_group-aggregate":      "4f0fea56069e128b6efb5cf69722457e",
	} {
		if got := OperatorIDOfUID(uid); got != want {
			t.Errorf("OperatorIDOfUID(%q) = %s, Flink wrote %s", uid, got, want)
		}
	}
}

// Seed 0 hashes no bytes to zero, whatever the layout.
func TestMurmur3Empty(t *testing.T) {
	if got := OperatorIDOfUID(""); got != "00000000000000000000000000000000" {
		t.Errorf("murmur3_128(\"\") = %s", got)
	}
}

// Uids of every tail length (0..15 bytes past a 16-byte block) give
// distinct ids: each byte of the tail is mixed in.
func TestMurmur3Tails(t *testing.T) {
	seen := map[string]string{}
	for n := 0; n <= 40; n++ {
		uid := "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"[:n]
		id := OperatorIDOfUID(uid)
		if prev, dup := seen[id]; dup {
			t.Fatalf("%q and %q hash alike: %s", prev, uid, id)
		}
		seen[id] = uid
	}
}
