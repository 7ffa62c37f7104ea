#!/usr/bin/env bash
# Adds a primitive to the table without any rule (REMATKIT_CHECK_UNRULED_PRIMITIVE) and compiles
# each file of rules: every one must fail, naming the primitive its switch does not handle.
# Usage: unruled_primitive_check.sh CXX SOURCE_DIR GENERATED_INCLUDE_DIR
set -u
cxx=$1
src=$2
generated=$3
rules=(
  framework/src/ir/type_rules.cpp           # types
  framework/src/autodiff/jvp_rules.cpp      # JVP
  framework/src/autodiff/transpose_rules.cpp  # transpose
  framework/reference_math/src/compute.cpp  # reference kernel
  framework/src/interpreter/apply.cpp       # the reference kernel's params (decode_params)
  framework/src/autodiff/equation_flops.cpp # FLOPs
)
status=0
for file in "${rules[@]}"; do
  out=$(LC_ALL=C "$cxx" -std=c++20 -fsyntax-only -Werror=switch -DREMATKIT_CHECK_UNRULED_PRIMITIVE \
        -I"$src/framework/include" -I"$generated" -I"$src/plugins/include" -I"$src/framework/reference_math/include" \
        "$src/$file" 2>&1)
  if [ $? -eq 0 ]; then
    echo "FAIL: $file compiles with a primitive it has no rule for"
    status=1
  elif ! grep -q "kUnruledForCheck.* not handled in switch" <<<"$out"; then
    echo "FAIL: $file fails to compile, but not because of the missing rule:"
    echo "$out" | head -20
    status=1
  else
    echo "ok: $file: $(grep -m1 "kUnruledForCheck" <<<"$out")"
  fi
done
exit $status
