// Package metadata reads and writes Flink's `_metadata` file, format
// versions 2 to 7 (FLINK-FORMATS.md §4, §5 and §8): the checkpoint id, the
// master states, each operator's subtasks and their state handles (every
// handle type 0 to 17), channel state, and the trailing CheckpointProperties.
//
// ParseMetadata decodes untrusted bytes with every length and count checked
// first; EncodeMetadata writes what it decoded back to the same bytes.
// Nothing here reads the state files the handles point to: that is
// internal/statefile's.
package metadata
