package keygroup

// LocationSchemaVersion is the version of the Location JSON document.
const LocationSchemaVersion = 1

// Location is where Flink routes one key: its hash, key group and, when a
// parallelism is given, the subtask and that subtask's key-group range.
type Location struct {
	SchemaVersion  int     `json:"schema_version"`
	Key            string  `json:"key"`
	KeyType        KeyType `json:"key_type"`
	HashCode       int32   `json:"hash_code"`
	Murmur         int32   `json:"murmur"`
	MaxParallelism int     `json:"max_parallelism"`
	KeyGroup       int     `json:"key_group"`
	Parallelism    int     `json:"parallelism,omitempty"`
	Subtask        *int    `json:"subtask,omitempty"`
	SubtaskRange   *Range  `json:"subtask_key_groups,omitempty"`
}

// Locate computes where a key written as text goes. parallelism 0 means
// "key group only".
func Locate(t KeyType, text string, maxParallelism, parallelism int) (*Location, error) {
	p := parallelism
	if p == 0 {
		p = 1
	}
	if err := Check(p, maxParallelism); err != nil {
		return nil, err
	}
	h, err := HashText(t, text)
	if err != nil {
		return nil, err
	}
	loc := &Location{SchemaVersion: LocationSchemaVersion, Key: text, KeyType: t, HashCode: h, Murmur: Murmur(h), MaxParallelism: maxParallelism, KeyGroup: OfHash(h, maxParallelism)}
	if parallelism > 0 {
		sub := SubtaskOf(loc.KeyGroup, maxParallelism, parallelism)
		r := RangeOf(maxParallelism, parallelism, sub)
		loc.Parallelism, loc.Subtask, loc.SubtaskRange = parallelism, &sub, &r
	}
	return loc, nil
}
