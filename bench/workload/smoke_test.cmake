# Runs kvstash_workload --short and checks that it ran and wrote rows (no thresholds).
#   cmake -DPROGRAM=... -DOUT=DIR -P smoke_test.cmake
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
execute_process(
  COMMAND "${PROGRAM}" --short --workloads chat,analytics,rag,agents --json "${OUT}/rows.jsonl"
          --csv "${OUT}/rows.csv" --plots "${OUT}/plots"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvstash_workload --short exited with ${rc}")
endif()
file(STRINGS "${OUT}/rows.csv" csv)
file(STRINGS "${OUT}/rows.jsonl" json)
list(LENGTH csv csv_lines)
list(LENGTH json json_rows)
# Per workload at least the none and kvstash rows; the CSV has a header line more.
math(EXPR want_csv_lines "${json_rows} + 1")
if(json_rows LESS 8 OR NOT csv_lines EQUAL want_csv_lines)
  message(FATAL_ERROR "expected >= 8 rows and a CSV header, got ${json_rows} JSON rows, ${csv_lines} CSV lines")
endif()
foreach(workload chat analytics rag agents)
  foreach(store none kvstash)
    string(REGEX MATCH "\"workload\":\"${workload}\",\"store\":\"${store}\"[^\n]*\"requests\":[1-9]" hit "${json}")
    if(NOT hit)
      message(FATAL_ERROR "no ${store} row with requests for ${workload}")
    endif()
  endforeach()
endforeach()
