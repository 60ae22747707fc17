#pragma once

// The MPI communicator (OpenMPI), built when MMPT_WITH_MPI is on. Without it, MpiAvailable()
// is false and MpiWorldCommunicator() says how to get it.

#include <memory>

#include "mmpt/comm/communicator.h"

namespace mmpt::comm {

/// Whether this build has the MPI communicator.
bool MpiAvailable();

/// A communicator over MPI_COMM_WORLD. Initializes MPI (MPI_THREAD_FUNNELED) unless the
/// process already did, and finalizes it when the last such communicator is destroyed if it
/// initialized it. MPI errors come back as Status (MPI_ERRORS_RETURN), not aborts.
/// Errors: Internal (MPI_Init failed, or built without MPI).
Result<std::unique_ptr<Communicator>> MpiWorldCommunicator();

}  // namespace mmpt::comm
