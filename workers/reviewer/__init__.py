"""The reviewer daemon and what it is made of: diffs, guards, the reviewer command."""
