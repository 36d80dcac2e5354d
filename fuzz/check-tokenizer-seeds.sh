#!/bin/sh
# Replays fuzz/corpus/tokenizer/* through the tokenizer fuzz target.
exec "${top_builddir:-.}/fuzz/fuzz_tokenizer_replay" "${top_srcdir:-.}"/fuzz/corpus/tokenizer/*
