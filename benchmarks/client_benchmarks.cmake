# client: TTFT/ITL error vs the stream server, SSE events per client core, RSS per stream, and the
# standalone stream_server (README "Client"). Included from benchmarks/CMakeLists.txt.
if(NOT TARGET servelab_test_support)
  add_subdirectory(${CMAKE_SOURCE_DIR}/tests/support ${CMAKE_BINARY_DIR}/tests_support_for_benchmarks)
endif()
foreach(b client_accuracy client_throughput client_memory)
  add_executable(${b} ${CMAKE_CURRENT_LIST_DIR}/${b}.cc)
  target_include_directories(${b} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(${b} PRIVATE servelab_client servelab_test_support)
endforeach()
add_executable(stream_server ${CMAKE_CURRENT_LIST_DIR}/stream_server.cc)
target_link_libraries(stream_server PRIVATE servelab_test_support Threads::Threads)
