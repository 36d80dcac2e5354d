#!/bin/sh
# Installs what is missing, builds, and runs the default models on sample
# sentences.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh
echo "== bert-sentiment (data/sentiment)"
if [ -f data/sentiment/model.safetensors ]; then
    apps/bert-sentiment "A gorgeous, witty and moving film." \
        "The plot is thin and the acting is wooden; I was bored stiff." \
        "Not bad at all."
else
    echo "(default sentiment model not built yet; tokenizing instead)"
    printf 'A gorgeous, witty and moving film.\nHello\tworld!\n' |
        apps/bert-tokenize --model ../shared/vocab/bert-base-uncased --format tokens
fi
if [ -f data/ner/model.safetensors ]; then
    echo "== bert-tag (data/ner)"
    printf 'Angela Merkel met Emmanuel Macron in Paris on Tuesday.\nApple is looking at buying a U.K. startup.\n' |
        apps/bert-tag --format inline
fi
