#include "hw/channel/channel.h"

#include <stdexcept>

namespace stepsim {

Channel::Channel(std::string name, ChannelParams params, Context* producer, Context* consumer)
    : name_(std::move(name)), params_(params), producer_(producer), consumer_(consumer) {
  if (params_.depth < 1) throw std::invalid_argument("channel '" + name_ + "': depth must be >= 1");
  ring_.resize(params_.depth);
  deq_times_.assign(params_.depth, 0);
}

}  // namespace stepsim
