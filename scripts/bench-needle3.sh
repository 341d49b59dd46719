# Sourced by the bench scripts that time needle3: the model they share, random CQ weights from
# needle-synth, written once to build/bench-backends/needle3.needle (scripts/bench-backends.sh
# writes the same file). Sets $bin and $model. Needs a build (scripts/build.sh).
bin=build/bin
model=build/bench-backends/needle3.needle
[ -f "$model" ] || { mkdir -p "$(dirname "$model")" && "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$model"; }
