// libsystemc.so references sc_main; stepsim and the tests have their own main() and start the
// kernel themselves (sim/engine/simulation.cpp), so this entry point is never called.
extern "C" int sc_main(int, char**) { return 0; }
