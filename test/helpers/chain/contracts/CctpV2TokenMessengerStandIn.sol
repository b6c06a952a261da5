// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

// The package's MockToken (ERC20 with a public burn) and MockCircleMessageTransmitter's V2 send
// (@hyperlane-xyz/core contracts/mock/), reduced to the calls made here.
interface IBurnableToken {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
    function burn(uint256 amount) external;
}

interface IMessageTransmitterV2Send {
    function sendMessage(
        uint32 destinationDomain,
        bytes32 recipient,
        bytes32 destinationCaller,
        uint32 minFinalityThreshold,
        bytes calldata messageBody
    ) external;
}

/// @notice Test stand-in for Circle's TokenMessengerV2 on the origin chain, between Hyperlane's
/// real TokenBridgeCctpV2 and the package's MockCircleMessageTransmitter.
/// @dev Why it exists: the package's MockCircleTokenMessenger only burns in its V2
/// `depositForBurn`; it never calls the transmitter, so a transfer through it has no
/// `MessageSent` at all and the relayer (rightly) accepts nothing from it. Circle's
/// TokenMessengerV2 (circlefin/evm-cctp-contracts src/v2/TokenMessengerV2.sol) burns, sends a
/// BurnMessageV2 through the local MessageTransmitterV2 (`MessageSent`) and then emits
/// `DepositForBurn`; this contract does the same, without fees, minters or hooks.
contract CctpV2TokenMessengerStandIn {
    event DepositForBurn(
        address indexed burnToken,
        uint256 amount,
        address indexed depositor,
        bytes32 mintRecipient,
        uint32 destinationDomain,
        bytes32 destinationTokenMessenger,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 indexed minFinalityThreshold,
        bytes hookData
    );

    /// TokenMessengerV2's message body version (TokenBridgeCctpV2's constructor checks it is 1).
    uint32 public constant messageBodyVersion = 1;

    IMessageTransmitterV2Send public immutable messageTransmitter;
    /// The TokenMessenger of the destination chain: the CCTP message's recipient.
    bytes32 public immutable remoteTokenMessenger;

    constructor(IMessageTransmitterV2Send _messageTransmitter, bytes32 _remoteTokenMessenger) {
        messageTransmitter = _messageTransmitter;
        remoteTokenMessenger = _remoteTokenMessenger;
    }

    function depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold
    ) external {
        IBurnableToken(burnToken).transferFrom(msg.sender, address(this), amount);
        IBurnableToken(burnToken).burn(amount);
        // BurnMessageV2._formatMessageForRelay: feeExecuted and expirationBlock empty when sent.
        bytes memory burnMessage = abi.encodePacked(
            messageBodyVersion,
            bytes32(uint256(uint160(burnToken))),
            mintRecipient,
            amount,
            bytes32(uint256(uint160(msg.sender))), // messageSender: the Hyperlane token bridge
            maxFee,
            uint256(0),
            uint256(0),
            bytes("")
        );
        messageTransmitter.sendMessage(
            destinationDomain,
            remoteTokenMessenger,
            destinationCaller,
            minFinalityThreshold,
            burnMessage
        );
        emit DepositForBurn(
            burnToken,
            amount,
            msg.sender,
            mintRecipient,
            destinationDomain,
            remoteTokenMessenger,
            destinationCaller,
            maxFee,
            minFinalityThreshold,
            bytes("")
        );
    }
}
