#!/bin/sh
# Replays fuzz/corpus/config/* through the config.json fuzz target.
exec "${top_builddir:-.}/fuzz/fuzz_config_replay" "${top_srcdir:-.}"/fuzz/corpus/config/*
