#!/bin/sh
# Replays fuzz/corpus/safetensors/* through the safetensors fuzz target.
exec "${top_builddir:-.}/fuzz/fuzz_safetensors_replay" "${top_srcdir:-.}"/fuzz/corpus/safetensors/*
