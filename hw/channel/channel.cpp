#include "hw/channel/channel.h"

#include <stdexcept>

namespace stepsim {

Channel::Channel(std::string name, ChannelParams params, Context* producer, Context* consumer)
    : name_(std::move(name)), params_(params), producer_(producer), consumer_(consumer) {
  if (params_.depth < 1) throw std::invalid_argument("channel '" + name_ + "': depth must be >= 1");
  ring_.resize(params_.depth);
}

}  // namespace stepsim
